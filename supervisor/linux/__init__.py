"""The Linux mechanism: bubblewrap, the inner confiner, the exec watch."""
