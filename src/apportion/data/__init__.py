"""Files shipped with the package: the demo snapshot and the default scenario."""
