"""egnlp package."""
