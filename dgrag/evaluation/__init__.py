"""Evaluation: retrieval recall (page, section, cross-page) and answer quality over question sets."""
