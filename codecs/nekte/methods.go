package nekte

// The JSON-RPC method names of NEKTE.
const (
	MethodDiscover   = "nekte.discover"
	MethodInvoke     = "nekte.invoke"
	MethodDelegate   = "nekte.delegate"
	MethodContext    = "nekte.context"
	MethodVerify     = "nekte.verify"
	MethodTaskCancel = "nekte.task.cancel"
	MethodTaskResume = "nekte.task.resume"
	MethodTaskStatus = "nekte.task.status"
	MethodIntrospect = "nekte.introspect"
)

// Limits on string lengths, in UTF-16 code units as JavaScript counts them (the reference
// validator's limits).
const (
	MaxIDLen       = 64  // capability ids, task ids, context envelope ids
	MaxCategoryLen = 32  // capability categories
	MaxHashLen     = 64  // version hashes
	MaxDescLen     = 256 // capability descriptions
	// MaxTaskDescLen bounds a delegated task's description. The reference validator's
	// 256 is a limit on capability descriptions; a task description is the caller's
	// instruction and gets more room.
	MaxTaskDescLen = 4096
)
