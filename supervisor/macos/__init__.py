"""The macOS mechanism: Seatbelt profiles run by sandbox-exec."""
