// Package demo holds the demo backends and fixtures, out of the production tree: what
// `make run` and the `gatehouse demo-*` subcommands serve, and what tests and the MCP
// conformance suite (internal/conformance) run against. It owns three of them:
//
//   - Calculator (NewCalculatorServer, ServeCalculator, StartCalculator): the demo gRPC
//     backend, calculator.v1.CalculatorService, serving the JSON-RPC 2.0 specification's
//     example methods plus streaming ones, with gRPC health and server reflection. The
//     default configuration starts it on loopback (server.demo_grpc) so the first tour
//     shows real JSON-RPC → gRPC transcoding; tests use it as a real backend.
//   - Spec (NewSpec): the in-process target of routing.demo, serving the specification's
//     example methods (subtract, sum, update, notify_hello, get_data) directly. routing
//     claims and routes routing.DemoMethods; the server hands it this target through
//     routing.BuildOptions.Demo.
//   - MCP (NewMCP, MCPOptions): the MCP fixture server described below.
//
// demo may import schemas, codecs, gateway, state and routing (for their types and
// configuration), never faces or server: the gateway is assembled around these backends,
// not the other way round. Nothing in the production tree but server (which starts the
// demo backends it is configured with) and cmd/gatehouse imports demo.
//
// # The MCP fixture server
//
// MCP is a small MCP server, written with mcp-go, that provides exactly the fixtures the
// official MCP conformance suite (@modelcontextprotocol/conformance, server mode) expects
// of a server under test. The contents below follow the scenario sources of
// the suite version in SuiteVersion; each fixture behaves as its scenario checks.
//
// Tools:
//
//	test_simple_text                    one text item
//	test_image_content                  a 1×1 PNG (image/png)
//	test_audio_content                  a minimal WAV (audio/wav)
//	test_embedded_resource              an embedded text resource (test://embedded-resource)
//	test_multiple_content_types         text, image and an embedded JSON resource
//	test_tool_with_logging              three notifications/message at info level, StepDelay apart
//	test_tool_with_progress             progress 0, 50, 100 of 100 on the caller's progress token
//	test_error_handling                 a tool error (isError: true)
//	test_sampling {prompt}              asks the client for sampling/createMessage
//	test_elicitation {message}          asks the client for elicitation/create (username, email)
//	test_elicitation_sep1034_defaults   elicitation whose schema has a default for every primitive type
//	test_elicitation_sep1330_enums      elicitation with the five enum schema variants of SEP-1330
//	json_schema_2020_12_tool            an input schema using $schema, $defs and additionalProperties
//	test_reconnection                   a short call for the SSE polling scenario (SEP-1699)
//
// Resources: test://static-text, test://static-binary and test://watched-resource (which
// sends notifications/resources/updated to subscribers when UpdateWatchedResource is
// called); the template test://template/{id}/data. Prompts: test_simple_prompt,
// test_prompt_with_arguments {arg1, arg2}, test_prompt_with_embedded_resource {resourceUri}
// and test_prompt_with_image. Completion/complete answers for the prompt arguments and the
// template's id; logging/setLevel and resources/subscribe are honoured.
//
// Sampling and elicitation are written as multi round-trip handlers (SEP-2322): a client
// speaking protocol 2026-07-28 receives an input_required result and retries, and mcp-go
// turns the same handler into server-initiated requests for clients of earlier revisions.
//
// One MCP may be served over stdio (ServeStdio) and streamable HTTP
// (StreamableHTTPHandler) at the same time.
package demo
