"""features package."""
