"""What is scheduled: nodes, tasks, jobs and queues, and how they are loaded from kubectl YAML."""
