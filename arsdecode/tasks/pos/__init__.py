"""POS tagging as the paper's 3.2: TnT-style emissions with suffix handling over a tag LM."""
