package server

import (
	"strings"
	"testing"
)

func TestAgentsSectionValidation(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // in the error; none: valid
	}{
		{"with the internal listener", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {}\n", nil},
		{"every setting", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {namespace: \"gpu.\", versions: [\"1.0.0\"], heartbeat_interval: 1s, missed_heartbeats: 2, " +
			"max_frame_bytes: 4096, max_operators: 8, max_schema_bytes: 1024, max_agents: 2, max_concurrent_tasks: 1, dispatch_timeout: 5s, " +
			"max_messages_per_second: 10, handshake_timeout: 1s, auth: {require_credential: false, allow_loopback_anonymous: true}}\n", nil},
		{"without the internal listener", "agents: {}\n", []string{"agents", "server.internal"}},
		{"bad version", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {versions: [\"1.0\"]}\n", []string{"agents"}},
		{"bad namespace", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {namespace: agent}\n", []string{"agents"}},
		{"too short a heartbeat", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {heartbeat_interval: 1ms}\n", []string{"heartbeat_interval"}},
		{"unknown key", "server: {internal: {addr: 127.0.0.1:0}}\nagents: {heartbeat: 1s}\n", []string{"heartbeat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.yaml))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
