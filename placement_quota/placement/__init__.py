"""Everything that talks to Placement lives in this package."""
