package state_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/statetest"
)

func TestEmbeddedCellRater(t *testing.T) {
	statetest.RunCellRater(t, func(*testing.T) statetest.CellKV { return state.NewEmbedded(state.EmbeddedOptions{}) })
}

func TestRedisCellRater(t *testing.T) {
	srv := redistest.Start(t)
	statetest.RunCellRater(t, func(t *testing.T) statetest.CellKV { return newRedis(t, srv, state.RedisConfig{}) })
}
