package nekte

import (
	"context"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

type envelopeKey struct{}

type checkpointKey struct{}

type taskIDKey struct{}

// withTaskID returns ctx carrying the id of the task whose capability runs with it.
func withTaskID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, taskIDKey{}, id)
}

// TaskIDFrom returns the id of the task whose capability is being invoked with ctx; "" when
// ctx belongs to no task. The server puts it in the logs of everything the task runs.
func TaskIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(taskIDKey{}).(string)
	return id
}

// withEnvelope returns ctx carrying the context envelope a task's capability may receive.
func withEnvelope(ctx context.Context, e *envelope) context.Context {
	if e == nil {
		return ctx
	}
	return context.WithValue(ctx, envelopeKey{}, e.wire())
}

// EnvelopeFrom returns the context envelope of the task whose capability is being invoked
// with ctx, if the task carries one that may reach the capability (forward, or the
// capability in its scope). An Invoker that can pass context to its backend reads it here;
// the envelope's permissions bind whatever it does with it.
func EnvelopeFrom(ctx context.Context) (nk.Envelope, bool) {
	e, ok := ctx.Value(envelopeKey{}).(*nk.Envelope)
	if !ok {
		return nk.Envelope{}, false
	}
	return *e, true
}

// withCheckpoint returns ctx carrying the checkpoint a resumed task runs from.
func withCheckpoint(ctx context.Context, cp *Checkpoint) context.Context {
	if cp == nil {
		return ctx
	}
	return context.WithValue(ctx, checkpointKey{}, cp)
}

// CheckpointFrom returns the checkpoint of a resumed task whose capability is being
// invoked with ctx. A backend able to continue from where a run stopped reads it here; the
// others are simply re-run on the checkpoint's input.
func CheckpointFrom(ctx context.Context) (Checkpoint, bool) {
	cp, ok := ctx.Value(checkpointKey{}).(*Checkpoint)
	if !ok {
		return Checkpoint{}, false
	}
	return *cp, true
}
