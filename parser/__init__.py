"""parser package."""
