package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gatehouse-dev/gatehouse/gateway/state"
)

func TestConfigDecodes(t *testing.T) {
	const doc = "backend: embedded\nembedded:\n  max_entries: 5000\n  sweep_interval: 250ms\n"
	var cfg state.Config
	if err := yaml.UnmarshalWithOptions([]byte(doc), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := state.Config{Backend: "embedded", Embedded: state.EmbeddedConfig{MaxEntries: 5000, SweepInterval: 250 * time.Millisecond}}
	if cfg != want {
		t.Errorf("decoded %+v, want %+v", cfg, want)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		cfg     state.Config
		wantErr string // "" for success
	}{
		{"Default", state.Config{}, ""},
		{"Embedded", state.Config{Backend: "embedded", Embedded: state.EmbeddedConfig{MaxEntries: 10, SweepInterval: time.Minute}}, ""},
		{"Redis", state.Config{Backend: "redis"}, `unknown backend "redis": the allowed values are "embedded"`},
		{"CaseMatters", state.Config{Backend: "Embedded"}, `unknown backend "Embedded"`},
		{"NegativeMaxEntries", state.Config{Embedded: state.EmbeddedConfig{MaxEntries: -1}}, "max_entries"},
		{"NegativeSweep", state.Config{Embedded: state.EmbeddedConfig{SweepInterval: -time.Second}}, "sweep_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv, err := state.Open(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open error %v, want one containing %q", err, tt.wantErr)
				}
				if kv != nil {
					t.Errorf("Open returned a KV with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := kv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestOpenAppliesEmbeddedConfig(t *testing.T) {
	kv, err := state.Open(state.Config{Embedded: state.EmbeddedConfig{MaxEntries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	ctx := t.Context()
	for _, k := range []string{"a", "b"} {
		if err := kv.Set(ctx, k, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Set(ctx, "c", nil, time.Hour); err == nil {
		t.Errorf("third entry with max_entries 2 was accepted")
	}
	if got, want := kv.(state.Limited).Limits(), state.DefaultLimits(); got != want {
		t.Errorf("Limits() = %+v, want the defaults %+v", got, want)
	}
}
