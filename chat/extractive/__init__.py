"""Extractive answers (no LLM): the sentences, table rows and code blocks of the sources that hold the answer,
each group cited ``[n]``.

A unit is scored by the share of the question's weight it holds (tokens weighted by their reference idf), with a
bonus when it holds what the question asks for, discounted by its source's rank; the best one leads, with the
neighbours, list items, table header or code it needs. How and why: docs/chat.md "How extractive answers are chosen".

The stages, one module each: ``units``, ``asks``, ``scoring``, ``choosing``, ``rendering``; ``answer`` runs them.
"""
from chat.extractive.answer import MAX_EXTRACT_CHARS, extractive_answer
from chat.extractive.asks import holds, is_list_question, question_asks
from chat.extractive.units import Unit, source_text, units

__all__ = ["MAX_EXTRACT_CHARS", "Unit", "extractive_answer", "holds", "is_list_question", "question_asks",
           "source_text", "units"]
