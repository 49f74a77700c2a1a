package a2a

import "strings"

// Version is a protocol version of the binding.
type Version uint8

// The versions this package speaks.
const (
	V03 Version = iota // 0.3: what a request without A2A-Version means
	V10                // 1.0
)

// VersionHeader is the header a client names its version in.
const VersionHeader = "A2A-Version"

// String returns "0.3" or "1.0".
func (v Version) String() string {
	if v == V10 {
		return "1.0"
	}
	return "0.3"
}

// ParseVersion reads the A2A-Version header's value: empty is 0.3; "1.0" (or "1", or a
// 1.0 patch such as "1.0.1") is 1.0; "0.3" (or "0.3.x") is 0.3. Any other value is a
// VersionNotSupported error.
func ParseVersion(h string) (Version, *Error) {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return V03, nil
	case h == "1" || h == "1.0" || strings.HasPrefix(h, "1.0."):
		return V10, nil
	case h == "0.3" || strings.HasPrefix(h, "0.3."):
		return V03, nil
	}
	return 0, Errf(CodeVersionNotSupported, "Version not supported").Info("VERSION_NOT_SUPPORTED", "supported", "1.0, 0.3")
}

// Op is an operation of the binding, whatever its version calls it.
type Op uint8

// The operations.
const (
	OpUnknown Op = iota
	OpSendMessage
	OpSendStreamingMessage
	OpGetTask
	OpListTasks
	OpCancelTask
	OpSubscribeToTask
	OpCreatePushConfig
	OpGetPushConfig
	OpListPushConfigs
	OpDeletePushConfig
	OpGetExtendedCard
)

// Streaming reports whether the operation answers with an event stream.
func (o Op) Streaming() bool { return o == OpSendStreamingMessage || o == OpSubscribeToTask }

// PushConfig reports whether the operation is one of the push-notification config ones.
func (o Op) PushConfig() bool { return o >= OpCreatePushConfig && o <= OpDeletePushConfig }

// methods10 and methods03 are the method names of each version.
var (
	methods10 = map[string]Op{
		"SendMessage": OpSendMessage, "SendStreamingMessage": OpSendStreamingMessage,
		"GetTask": OpGetTask, "ListTasks": OpListTasks, "CancelTask": OpCancelTask,
		"SubscribeToTask":                  OpSubscribeToTask,
		"CreateTaskPushNotificationConfig": OpCreatePushConfig, "GetTaskPushNotificationConfig": OpGetPushConfig,
		"ListTaskPushNotificationConfigs": OpListPushConfigs, "DeleteTaskPushNotificationConfig": OpDeletePushConfig,
		"GetExtendedAgentCard": OpGetExtendedCard,
	}
	methods03 = map[string]Op{
		"message/send": OpSendMessage, "message/stream": OpSendStreamingMessage,
		"tasks/get": OpGetTask, "tasks/list": OpListTasks, "tasks/cancel": OpCancelTask,
		"tasks/resubscribe":                 OpSubscribeToTask,
		"tasks/pushNotificationConfig/set":  OpCreatePushConfig,
		"tasks/pushNotificationConfig/get":  OpGetPushConfig,
		"tasks/pushNotificationConfig/list": OpListPushConfigs, "tasks/pushNotificationConfig/delete": OpDeletePushConfig,
		"agent/getAuthenticatedExtendedCard": OpGetExtendedCard,
	}
)

// OpOf returns the operation v calls method, OpUnknown for none.
func OpOf(v Version, method string) Op {
	if v == V10 {
		return methods10[method]
	}
	return methods03[method]
}

// IsV03Method reports whether method is a 0.3 method name (whatever the request's version).
func IsV03Method(method string) bool { return methods03[method] != OpUnknown }
