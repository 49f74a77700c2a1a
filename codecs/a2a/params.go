package a2a

import "encoding/json"

// SendMessageConfiguration says how a SendMessage is answered. Blocking is the 0.3
// spelling (false asks for an answer at once, as 1.0's ReturnImmediately does);
// PushNotificationConfig is 0.3's name of TaskPushNotificationConfig.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string                    `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig *TaskPushNotificationConfig `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int32                      `json:"historyLength,omitempty"`
	ReturnImmediately          bool                        `json:"returnImmediately,omitempty"`
	Blocking                   *bool                       `json:"blocking,omitempty"`
	PushNotificationConfig     *TaskPushNotificationConfig `json:"pushNotificationConfig,omitempty"`
}

// Immediate reports whether the client asked for an answer before the task ends.
func (c *SendMessageConfiguration) Immediate() bool {
	if c == nil {
		return false
	}
	return c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking)
}

// PushConfig returns the push-notification config the request carries, in either spelling.
func (c *SendMessageConfiguration) PushConfig() *TaskPushNotificationConfig {
	if c == nil {
		return nil
	}
	if c.TaskPushNotificationConfig != nil {
		return c.TaskPushNotificationConfig
	}
	return c.PushNotificationConfig
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage (0.3:
// MessageSendParams).
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      json.RawMessage           `json:"metadata,omitempty"`
}

// GetTaskRequest is the params of GetTask (0.3: TaskQueryParams).
type GetTaskRequest struct {
	Tenant        string          `json:"tenant,omitempty"`
	ID            string          `json:"id"`
	HistoryLength *int32          `json:"historyLength,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int32    `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int32    `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     *bool     `json:"includeArtifacts,omitempty"`
}

// TaskIDRequest is the params of CancelTask and SubscribeToTask (0.3: TaskIdParams).
type TaskIDRequest struct {
	Tenant   string          `json:"tenant,omitempty"`
	ID       string          `json:"id"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// AuthenticationInfo is how a push notification authenticates to its receiver.
type AuthenticationInfo struct {
	Scheme      string   `json:"scheme,omitempty"`
	Credentials string   `json:"credentials,omitempty"`
	Schemes     []string `json:"schemes,omitempty"` // 0.3
}

// TaskPushNotificationConfig is where a task's updates are posted.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId,omitempty"`
	URL            string              `json:"url"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
}

// PushConfigRequest is the params of the push-notification config operations: the
// config itself (create) or the task and config ids (get, list, delete), in 1.0's and
// 0.3's spellings (0.3 nests the config in pushNotificationConfig and names the task id).
type PushConfigRequest struct {
	Tenant                   string                      `json:"tenant,omitempty"`
	ID                       string                      `json:"id,omitempty"`
	TaskID                   string                      `json:"taskId,omitempty"`
	URL                      string                      `json:"url,omitempty"`
	Token                    string                      `json:"token,omitempty"`
	Authentication           *AuthenticationInfo         `json:"authentication,omitempty"`
	PushNotificationConfig   *TaskPushNotificationConfig `json:"pushNotificationConfig,omitempty"`
	PushNotificationConfigID string                      `json:"pushNotificationConfigId,omitempty"`
	PageSize                 int32                       `json:"pageSize,omitempty"`
	PageToken                string                      `json:"pageToken,omitempty"`
}

// ExtendedCardRequest is the params of GetExtendedAgentCard.
type ExtendedCardRequest struct {
	Tenant string `json:"tenant,omitempty"`
}

// HistoryLen returns the history length the client asked for, nil when none.
func (c *SendMessageConfiguration) HistoryLen() *int32 {
	if c == nil {
		return nil
	}
	return c.HistoryLength
}
