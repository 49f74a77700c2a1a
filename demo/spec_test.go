package demo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func newSpec(cfg routing.DemoConfig) gateway.Target { return demo.NewSpec(cfg) }

// routing claims and routes DemoMethods for routing.demo without importing demo: they must
// be exactly the methods Spec serves, in its order.
func TestSpecMethodsAreRoutingDemoMethods(t *testing.T) {
	got, want := demo.NewSpec(routing.DemoConfig{}).Methods(), routing.DemoMethods()
	if !slices.Equal(got, want) {
		t.Fatalf("demo.Spec.Methods() = %v, routing.DemoMethods() = %v", got, want)
	}
	for _, c := range demo.NewSpec(routing.DemoConfig{}).Capabilities() {
		if !slices.Contains(want, c.Method) {
			t.Errorf("capability %q is not in routing.DemoMethods()", c.Method)
		}
	}
}

func TestBuildNeedsDemoTarget(t *testing.T) {
	if _, err := routing.Build(routing.Config{Demo: &routing.DemoConfig{}}, routing.BuildOptions{}); err == nil {
		t.Fatal("routing.demo without BuildOptions.Demo built a table")
	}
}

func TestDemoMethods(t *testing.T) {
	d := demo.NewSpec(routing.DemoConfig{})
	tests := []struct {
		method, params, want string
		code                 schemas.Code
	}{
		{"subtract", `[42, 23]`, `19`, 0},
		{"subtract", `[23, 42]`, `-19`, 0},
		{"subtract", `{"subtrahend": 23, "minuend": 42}`, `19`, 0},
		{"subtract", `{"minuend": 42, "subtrahend": 23}`, `19`, 0},
		{"subtract", `[1.5, 0.25]`, `1.25`, 0},
		{"subtract", `[-9223372036854775808, 1]`, `-9.223372036854776e+18`, 0},
		{"subtract", `[0, -9223372036854775808]`, `9.223372036854776e+18`, 0},
		{"subtract", `[42]`, ``, schemas.CodeInvalidParams},
		{"subtract", `[42, "x"]`, ``, schemas.CodeInvalidParams},
		{"subtract", `{"minuend": 42}`, ``, schemas.CodeInvalidParams},
		{"subtract", `{"minuend": 42, "subtrahend": 1, "extra": 0}`, ``, schemas.CodeInvalidParams},
		{"subtract", ``, ``, schemas.CodeInvalidParams},
		{"sum", `[1, 2, 4]`, `7`, 0},
		{"sum", `[]`, `0`, 0},
		{"sum", `[9223372036854775807, 1]`, `9.223372036854776e+18`, 0},
		{"sum", `[1e308, 1e308]`, ``, schemas.CodeInvalidParams},
		{"sum", `{"a": 1}`, ``, schemas.CodeInvalidParams},
		{"sum", ``, ``, schemas.CodeInvalidParams},
		{"update", `[1, 2, 3, 4, 5]`, `null`, 0},
		{"notify_hello", `[7]`, `null`, 0},
		{"get_data", ``, `["hello",5]`, 0},
		{"get_data", `[]`, `["hello",5]`, 0},
		{"get_data", `[1]`, ``, schemas.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.params, func(t *testing.T) {
			res, err := d.Invoke(context.Background(), &gateway.Call{Method: tt.method, Params: []byte(tt.params)})
			if tt.code != 0 {
				var ge *gateway.Error
				if !errors.As(err, &ge) || ge.Code() != tt.code {
					t.Fatalf("got result %v, err %v; want code %d", res, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if string(res.Value) != tt.want {
				t.Errorf("got %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestDemoDelayRespectsDeadline(t *testing.T) {
	d := demo.NewSpec(routing.DemoConfig{Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := d.Invoke(ctx, &gateway.Call{Method: "get_data"})
	if got := gateway.AsError(err); got == nil || got.Code() != schemas.CodeDeadlineExceeded {
		t.Fatalf("got %v, want DEADLINE_EXCEEDED", err)
	}
}

func TestTableRouteAndDuplicates(t *testing.T) {
	tb, err := routing.Build(routing.Config{Demo: &routing.DemoConfig{}}, routing.BuildOptions{Demo: newSpec})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"get_data", "notify_hello", "subtract", "sum", "update"}
	if got := tb.Methods(); len(got) != len(want) {
		t.Fatalf("methods %v, want %v", got, want)
	}
	h := gateway.Chain(routing.Dispatch, tb.Route)
	if _, err := h(context.Background(), &gateway.Call{Method: "nope"}); gateway.AsError(err).Code() != schemas.CodeMethodNotFound {
		t.Fatalf("unknown method: got %v", err)
	}
	res, err := h(context.Background(), &gateway.Call{Method: "sum", Params: []byte(`[1,2]`)})
	if err != nil || string(res.Value) != "3" {
		t.Fatalf("sum: got %v, %v", res, err)
	}
	if err := tb.Add("sum", demo.NewSpec(routing.DemoConfig{})); err == nil {
		t.Fatal("adding a method twice succeeded")
	}
	if n := len(tb.Targets()); n != 1 {
		t.Fatalf("targets: got %d, want 1", n)
	}
}

// TestDemoHasNoBackend: the demo runs in the process, so the breaker, retry and admission
// stages pass its calls through.
func TestDemoHasNoBackend(t *testing.T) {
	d := demo.NewSpec(routing.DemoConfig{})
	if b := gateway.BackendOf(&gateway.Call{Method: "subtract", Target: d}); b != "" {
		t.Fatalf("BackendOf = %q, want none", b)
	}
}
