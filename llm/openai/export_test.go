package openai

// OutputSchemaName is the response-format name the tests check.
const OutputSchemaName = outputSchemaName
