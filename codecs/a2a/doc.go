// Package a2a is the wire format of the Agent2Agent protocol (A2A) v1.0 over its JSON-RPC
// binding, with the 0.3 spellings the binding still meets: the messages, parts, tasks,
// artifacts and stream events of specification/a2a.proto in their ProtoJSON form
// (camelCase member names, enums as SCREAMING_SNAKE_CASE names), the agent card, the
// params and results of the operations, and the errors of the binding.
//
// # Versions
//
// A request names its version in the A2A-Version header; without one it is 0.3
// (ParseVersion). Version 1.0 has the method names of the proto (SendMessage, GetTask,
// …), enums such as TASK_STATE_COMPLETED and ROLE_USER, parts told apart by their member
// (text, raw, url, data), and stream results wrapped in the member of their kind
// (statusUpdate, artifactUpdate, task, message). Version 0.3 has slash-separated method
// names (message/send, tasks/get, tasks/resubscribe, …), lowercase states ("completed",
// "input-required"), lowercase roles, and a "kind" member on every polymorphic object. The
// types of this package are those of 1.0; Task.In, Message.In and the stream encoders
// write either spelling, and DecodeRequest reads either into the 1.0 types.
//
// # Decoding
//
// DecodeRequest is strict: the envelope goes through codecs/jsonrpc (size, nesting depth
// and string length bounded, a member name given twice anywhere refused, exactly the
// JSON-RPC members), batches are refused, and params are read with member names matched
// case-sensitively — a name that equals a field's only when case is ignored is an error —
// then checked against the operation's contract. Every refusal is an *Error with the
// binding's code and never repeats the input.
package a2a
