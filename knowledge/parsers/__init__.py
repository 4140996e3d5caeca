"""File parsers: one module per format, all returning a ``ParsedDocument`` of ``Block``s."""
from knowledge.parsers.base import (
    SUPPORTED_EXTENSIONS,
    Block,
    ParsedDocument,
    ParseError,
    parse_file,
)

__all__ = ["SUPPORTED_EXTENSIONS", "Block", "ParseError", "ParsedDocument", "parse_file"]
