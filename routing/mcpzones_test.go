package routing

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestMCPDirectZonesConfig(t *testing.T) {
	tests := []struct {
		name    string
		zones   []string
		want    []gateway.TrustZone
		wantErr string
	}{
		{"absent: every zone but external", nil, []gateway.TrustZone{gateway.ZoneInternal, gateway.ZoneOperator, gateway.ZoneLocal}, ""},
		{"empty: none", []string{}, []gateway.TrustZone{}, ""},
		{"the demo's", []string{"external", "internal", "operator", "local"},
			[]gateway.TrustZone{gateway.ZoneExternal, gateway.ZoneInternal, gateway.ZoneOperator, gateway.ZoneLocal}, ""},
		{"unknown name", []string{"internal", "public"}, nil, `"public" is not a trust zone`},
		{"names are case-sensitive", []string{"External"}, nil, `"External" is not a trust zone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &MCPConfig{DirectZones: tt.zones}
			got, err := cfg.directZones()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v; want one containing %q", err, tt.wantErr)
				}
				if verr := (Config{MCP: cfg}).Validate(); verr == nil {
					t.Fatal("Validate accepted the configuration")
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
