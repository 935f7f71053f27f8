"""SMS retrieval as the paper's 3.1: words from noisy phone-keypad digits."""
