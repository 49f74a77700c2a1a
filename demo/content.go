package demo

// The media types of the fixture contents.
const (
	mimeText = "text/plain"
	mimeJSON = "application/json"
	mimePNG  = "image/png"
	mimeWAV  = "audio/wav"
)

// The fixture contents, as the suite's scenario descriptions give them.
const (
	// pngBase64 is a 1×1 red pixel PNG.
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	// wavBase64 is a minimal WAV file (RIFF header, 8 kHz mono, one silent sample).
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

	simpleText        = "This is a simple text response for testing."
	embeddedURI       = "test://embedded-resource"
	embeddedText      = "This is an embedded resource content."
	mixedIntro        = "Multiple content types test:"
	mixedURI          = "test://mixed-content-resource"
	mixedJSON         = `{"test":"data","value":123}`
	toolErrorText     = "This tool intentionally returns an error for testing"
	loggingDoneText   = "Tool with logging executed successfully"
	progressDoneText  = "Tool with progress executed successfully"
	reconnectDoneText = "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
	loggerName        = "conformance-test-server"

	staticTextURI    = "test://static-text"
	staticText       = "This is the content of the static text resource."
	staticBinaryURI  = "test://static-binary"
	watchedURI       = "test://watched-resource"
	watchedInitial   = "Watched resource content"
	templateURI      = "test://template/{id}/data"
	promptSimpleText = "This is a simple prompt for testing."
	promptEmbedText  = "Embedded resource content for testing."
	promptEmbedAsk   = "Please process the embedded resource above."
	promptImageAsk   = "Please analyze the image above."

	// jsonSchema202012 is the input schema of json_schema_2020_12_tool (SEP-1613): the
	// scenario checks that $schema, $defs and additionalProperties survive tools/list.
	jsonSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
  "additionalProperties": false
}`
)
