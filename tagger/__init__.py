"""tagger package."""
