"""Object storage for migrated projects: `torchport migrate --object-storage / --modelarts`."""
