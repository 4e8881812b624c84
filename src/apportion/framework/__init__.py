"""Volcano's session framework: configuration, session, extension points, statements."""
