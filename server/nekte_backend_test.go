package server

import (
	"testing"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// TestNekteTargetsForTheStages: the NEKTE service has no backend, and says which of its
// calls the retry stage must never retry — those that delegate or concern a task.
func TestNekteTargetsForTheStages(t *testing.T) {
	core := &nekteCore{}
	for _, target := range []gateway.Target{core, &nekteRoute{nekteCore: core}} {
		for method, want := range map[string]bool{
			nk.MethodDelegate: true, nk.MethodTaskResume: true, nk.MethodTaskCancel: true, nk.MethodTaskStatus: true,
			nekte.MethodTaskStream: true, nekte.MethodTaskSuspend: true,
			nk.MethodInvoke: false, nk.MethodDiscover: false,
		} {
			call := &gateway.Call{Method: method, Target: target}
			if got := target.(gateway.Unretryable).NotRetryable(call); got != want {
				t.Errorf("%T: NotRetryable(%s) = %v, want %v", target, method, got, want)
			}
			if b := gateway.BackendOf(call); b != "" {
				t.Errorf("%T: BackendOf(%s) = %q, want none", target, method, b)
			}
		}
	}
}
