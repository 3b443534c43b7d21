"""Model-family fixtures: tiny random-weight GGUFs that carry real vocabularies and chat templates."""
