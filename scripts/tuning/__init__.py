"""The offline tuning runs behind ``scripts/tune_retrieval.py``: bench data, retrieval quality, the judge's
evidence, the judge's fit and the verdict's lines."""
