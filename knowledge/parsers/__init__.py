"""File parsers: one module per format, all returning a ``ParsedDocument`` of ``Block``s."""
from knowledge.parsers.base import SUPPORTED_EXTENSIONS, parse_file
from knowledge.parsers.types import Block, ParsedDocument, ParseError

__all__ = ["SUPPORTED_EXTENSIONS", "Block", "ParseError", "ParsedDocument", "parse_file"]
