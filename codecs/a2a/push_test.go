package a2a_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
)

func TestPushConfigRequests(t *testing.T) {
	tests := []struct {
		name         string
		v            a2a.Version
		method       string
		params       string
		task, config string
		url          string
		code         int
	}{
		{"create 1.0", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t","id":"c","url":"https://h/x","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}`, "t", "c", "https://h/x", 0},
		{"create 1.0 no id", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t","url":"https://h/x"}`, "t", "", "https://h/x", 0},
		{"create 1.0 no url", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t"}`, "", "", "", -32602},
		{"create 1.0 no task", a2a.V10, "CreateTaskPushNotificationConfig", `{"url":"https://h/x"}`, "", "", "", -32602},
		{"create 1.0 bad scheme", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t","url":"https://h/x","authentication":{"scheme":"Bear er"}}`, "", "", "", -32602},
		{"create 1.0 header injection", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t","url":"https://h/x","token":"a\r\nX-Evil: 1"}`, "", "", "", -32602},
		{"create 1.0 long url", a2a.V10, "CreateTaskPushNotificationConfig", `{"taskId":"t","url":"https://h/` + strings.Repeat("x", 3000) + `"}`, "", "", "", -32602},
		{"set 0.3", a2a.V03, "tasks/pushNotificationConfig/set", `{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h/x","authentication":{"schemes":["Bearer"],"credentials":"s"}}}`, "t", "c", "https://h/x", 0},
		{"set 0.3 no config", a2a.V03, "tasks/pushNotificationConfig/set", `{"taskId":"t"}`, "", "", "", -32602},
		{"get 1.0", a2a.V10, "GetTaskPushNotificationConfig", `{"taskId":"t","id":"c"}`, "t", "c", "", 0},
		{"get 1.0 no id", a2a.V10, "GetTaskPushNotificationConfig", `{"taskId":"t"}`, "", "", "", -32602},
		{"get 0.3", a2a.V03, "tasks/pushNotificationConfig/get", `{"id":"t","pushNotificationConfigId":"c"}`, "t", "c", "", 0},
		{"get 0.3 without config id", a2a.V03, "tasks/pushNotificationConfig/get", `{"id":"t"}`, "t", "", "", 0},
		{"list 1.0", a2a.V10, "ListTaskPushNotificationConfigs", `{"taskId":"t","pageSize":5}`, "t", "", "", 0},
		{"list 0.3", a2a.V03, "tasks/pushNotificationConfig/list", `{"id":"t"}`, "t", "", "", 0},
		{"delete 1.0", a2a.V10, "DeleteTaskPushNotificationConfig", `{"taskId":"t","id":"c"}`, "t", "c", "", 0},
		{"delete 0.3", a2a.V03, "tasks/pushNotificationConfig/delete", `{"id":"t","pushNotificationConfigId":"c"}`, "t", "c", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _, err := a2a.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"`+tt.method+`","params":`+tt.params+`}`), tt.v, a2a.DefaultLimits)
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			task, config, cfg, aerr := req.Push.Normalized(req.Op, tt.v)
			if tt.code != 0 {
				if aerr == nil || int(aerr.Code) != tt.code {
					t.Fatalf("Normalized = %v, want code %d", aerr, tt.code)
				}
				return
			}
			if aerr != nil {
				t.Fatalf("Normalized: %v", aerr)
			}
			if task != tt.task || config != tt.config || cfg.URL != tt.url {
				t.Errorf("task %q config %q url %q", task, config, cfg.URL)
			}
		})
	}
}

func TestMarshalPushConfig(t *testing.T) {
	c := a2a.TaskPushNotificationConfig{ID: "c", TaskID: "t", URL: "https://h/x", Token: "k",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "s"}}
	for _, tt := range []struct {
		name string
		got  func() ([]byte, error)
		want string
	}{
		{"1.0", func() ([]byte, error) { return a2a.MarshalPushConfig(c, a2a.V10) },
			`{"id":"c","taskId":"t","url":"https://h/x","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}`},
		{"0.3", func() ([]byte, error) { return a2a.MarshalPushConfig(c, a2a.V03) },
			`{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h/x","token":"k","authentication":{"credentials":"s","schemes":["Bearer"]}}}`},
		{"list 1.0", func() ([]byte, error) {
			return a2a.MarshalPushConfigs([]a2a.TaskPushNotificationConfig{c}, "", a2a.V10)
		},
			`{"configs":[{"id":"c","taskId":"t","url":"https://h/x","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}]}`},
		{"list 0.3", func() ([]byte, error) { return a2a.MarshalPushConfigs(nil, "", a2a.V03) }, `[]`},
	} {
		got, err := tt.got()
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s (%v)\nwant %s", tt.name, got, err, tt.want)
		}
	}
}
