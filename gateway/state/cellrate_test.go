package state_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway/state"
	"github.com/gatehouse-dev/gatehouse/gateway/state/statetest"
	"github.com/gatehouse-dev/gatehouse/internal/redistest"
)

func TestEmbeddedCellRater(t *testing.T) {
	statetest.RunCellRater(t, func(*testing.T) statetest.CellKV { return state.NewEmbedded(state.EmbeddedOptions{}) })
}

func TestRedisCellRater(t *testing.T) {
	srv := redistest.Start(t)
	statetest.RunCellRater(t, func(t *testing.T) statetest.CellKV { return newRedis(t, srv, state.RedisConfig{}) })
}
