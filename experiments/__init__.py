"""The experiments behind docs/results-*.md: thin runners, with every page rendered in `report/`.

Run a runner as a script from anywhere, `python experiments/<name>.py`: it puts the repository
root on sys.path (experiments/ and data_prep/ are folders of the repository, not installed
packages), so the modules here import each other as `experiments.<module>`, the way the tests
import them too. The oracles they share with the tests and bench/ (brute force, random ARPA
models, the reference ARS) are the public `arsdecode.testing`.
"""
