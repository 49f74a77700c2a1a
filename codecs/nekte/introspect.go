package nekte

// Topic is what nekte.introspect explains.
type Topic string

// The introspection topics; absent means all.
const (
	TopicBudget    Topic = "budget"
	TopicDiscovery Topic = "discovery"
	TopicErrors    Topic = "errors"
	TopicTasks     Topic = "tasks"
	TopicAll       Topic = "all"
)

// IntrospectParams are the params of nekte.introspect.
type IntrospectParams struct {
	Topic Topic `json:"topic,omitempty"`
}

var _ Params = (*IntrospectParams)(nil)

// Validate checks the topic.
func (p *IntrospectParams) Validate() error {
	switch p.Topic {
	case "", TopicBudget, TopicDiscovery, TopicErrors, TopicTasks, TopicAll:
		return nil
	default:
		return &ParamError{Field: "topic", Reason: `must be "budget", "discovery", "errors", "tasks" or "all"`}
	}
}

// IntrospectResult is the result of nekte.introspect: a guide in plain text.
type IntrospectResult struct {
	Guide string `json:"guide"`
}
