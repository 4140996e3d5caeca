"""The REST API's shared parts: the error handler, the schema generator, pagination, the JSON parser, fields."""
