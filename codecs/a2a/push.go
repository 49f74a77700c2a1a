package a2a

import (
	"encoding/json"
	"strconv"
)

// Normalized returns the request in one form whatever its version: the task id, the
// config id (get, delete; create: the one the client chose, if any) and, for create, the
// config with its task id. 1.0 names the task taskId and the config id; 0.3 nests the
// created config in pushNotificationConfig and names the task id and the config
// pushNotificationConfigId elsewhere.
func (p *PushConfigRequest) Normalized(op Op, v Version) (taskID, configID string, cfg TaskPushNotificationConfig, err *Error) {
	taskField := "taskId"
	taskID, configID = p.TaskID, p.ID
	if v == V03 {
		switch op {
		case OpCreatePushConfig:
			if p.PushNotificationConfig == nil {
				return "", "", cfg, InvalidParams("pushNotificationConfig", "is required")
			}
			cfg = *p.PushNotificationConfig
			configID = cfg.ID
		default: // get, list, delete: {id: task id, pushNotificationConfigId}
			taskField, taskID, configID = "id", p.ID, p.PushNotificationConfigID
		}
	} else if op == OpCreatePushConfig {
		cfg = TaskPushNotificationConfig{ID: p.ID, URL: p.URL, Token: p.Token, Authentication: p.Authentication}
	}
	if e := checkTaskID(taskField, taskID, nil); e != nil {
		return "", "", cfg, e
	}
	if len(configID) > MaxIDBytes {
		return "", "", cfg, InvalidParams("id", "must be at most "+strconv.Itoa(MaxIDBytes)+" bytes")
	}
	switch op {
	case OpCreatePushConfig:
		cfg.TaskID, cfg.ID = taskID, configID
		if e := cfg.Check("url"); e != nil {
			return "", "", cfg, e
		}
	case OpGetPushConfig, OpDeletePushConfig:
		if v == V10 && configID == "" {
			return "", "", cfg, InvalidParams("id", "is required")
		}
	}
	return taskID, configID, cfg, nil
}

// MaxURLBytes bounds a push-notification URL; MaxTokenBytes its token and credentials.
const (
	MaxURLBytes   = 2048
	MaxTokenBytes = 4096
)

// Check validates what a config carries beyond its URL's destination (the agent's own
// allowlist): a URL of at most MaxURLBytes, a token and credentials of at most
// MaxTokenBytes, an authentication scheme that is a token (RFC 9110 §11.1). field names
// the url member in errors.
func (c *TaskPushNotificationConfig) Check(field string) *Error {
	switch {
	case c.URL == "":
		return InvalidParams(field, "is required")
	case len(c.URL) > MaxURLBytes:
		return InvalidParams(field, "must be at most "+strconv.Itoa(MaxURLBytes)+" bytes")
	case len(c.Token) > MaxTokenBytes:
		return InvalidParams("token", "must be at most "+strconv.Itoa(MaxTokenBytes)+" bytes")
	}
	if a := c.Authentication; a != nil {
		if len(a.Credentials) > MaxTokenBytes || !headerSafe(a.Credentials) {
			return InvalidParams("authentication.credentials", "must be at most "+strconv.Itoa(MaxTokenBytes)+" bytes of visible ASCII")
		}
		if s := a.SchemeName(); s != "" && !isToken(s) {
			return InvalidParams("authentication.scheme", "must be an HTTP authentication scheme name")
		}
	}
	if !headerSafe(c.Token) {
		return InvalidParams("token", "must be visible ASCII")
	}
	return nil
}

// SchemeName returns the scheme a push notification authenticates with: 1.0's scheme, or
// the first of 0.3's schemes.
func (a *AuthenticationInfo) SchemeName() string {
	if a == nil {
		return ""
	}
	if a.Scheme != "" {
		return a.Scheme
	}
	if len(a.Schemes) > 0 {
		return a.Schemes[0]
	}
	return ""
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2).
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && !stringsContainsByte("!#$%&'*+-.^_`|~", c) {
			return false
		}
	}
	return true
}

// headerSafe reports whether s can be sent in a header value: visible ASCII and spaces.
func headerSafe(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func stringsContainsByte(s string, c byte) bool {
	for i := range len(s) {
		if s[i] == c {
			return true
		}
	}
	return false
}

// marshal returns c as version v writes it: 1.0 flat, 0.3 as TaskPushNotificationConfig
// {taskId, pushNotificationConfig: {id, url, token, authentication: {schemes,
// credentials}}}.
func (c TaskPushNotificationConfig) marshal(v Version) any {
	if v == V10 {
		return c
	}
	type cfg03 struct {
		ID             string              `json:"id,omitempty"`
		URL            string              `json:"url"`
		Token          string              `json:"token,omitempty"`
		Authentication *AuthenticationInfo `json:"authentication,omitempty"`
	}
	inner := cfg03{ID: c.ID, URL: c.URL, Token: c.Token}
	if a := c.Authentication; a != nil {
		inner.Authentication = &AuthenticationInfo{Schemes: []string{a.SchemeName()}, Credentials: a.Credentials}
	}
	return struct {
		TaskID string `json:"taskId"`
		Config cfg03  `json:"pushNotificationConfig"`
	}{c.TaskID, inner}
}

// MarshalPushConfig returns c as the result of a create or get in version v.
func MarshalPushConfig(c TaskPushNotificationConfig, v Version) ([]byte, error) {
	return json.Marshal(c.marshal(v))
}

// MarshalPushConfigs returns cs as the result of a list in version v: 1.0's
// {"configs": [...], "nextPageToken"}, 0.3's bare array.
func MarshalPushConfigs(cs []TaskPushNotificationConfig, next string, v Version) ([]byte, error) {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.marshal(v))
	}
	if v == V03 {
		return json.Marshal(out)
	}
	return json.Marshal(struct {
		Configs       []any  `json:"configs"`
		NextPageToken string `json:"nextPageToken,omitempty"`
	}{out, next})
}
