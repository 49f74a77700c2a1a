package nekte

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// verify runs the checks of a nekte.verify call on the owner's completed task. Every
// check starts from the task's receipt, whose signature must verify with the gateway's
// key and whose claims must match the task record.
func (s *Service) verify(ctx context.Context, owner string, p *verifyParams) (*nk.VerifyResult, error) {
	r, err := s.tasks.get(ctx, owner, p.TaskID)
	if err != nil {
		return nil, err
	}
	claims, err := s.receiptOf(r)
	if err != nil {
		return nil, err
	}
	res := &nk.VerifyResult{TaskID: r.ID, Checks: p.Checks, Status: nk.VerifyStatusVerified}
	done := map[nk.Check]bool{}
	for _, check := range p.Checks {
		if done[check] {
			continue
		}
		done[check] = true
		var err error
		switch check {
		case nk.CheckHash:
			err = s.checkHash(r, claims, p.ResultHash, res)
		case nk.CheckSample:
			res.Sample, err = s.checkSample(ctx, r, claims, p.Budget)
		default:
			res.Source, err = s.checkSource(r, claims)
		}
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// receiptOf returns the verified claims of a task's receipt.
func (s *Service) receiptOf(r *record) (*receiptClaims, error) {
	if r.Status != nk.TaskCompleted || r.Receipt == "" {
		return nil, errVerification(r.ID, "the task has no receipt (it is "+string(r.Status)+"; only completed tasks have one)")
	}
	c, err := s.signer.parse(r.Receipt)
	switch {
	case errors.Is(err, errForeignKey):
		return nil, errVerification(r.ID, "its receipt was signed by another gateway key (a key generated per process; set nekte.receipts.key_file to share one)").Wrap(err)
	case err != nil:
		return nil, errVerification(r.ID, "its receipt's signature does not verify").Wrap(err)
	}
	in, err := digest(r.Input)
	if err != nil || c.TaskID != r.ID || c.Cap != r.Cap || c.H != r.Hash || c.InputSHA256 != in || c.CreatedAt != r.CreatedAt {
		return nil, errVerification(r.ID, "its receipt does not match the task's record")
	}
	return c, nil
}

// checkHash reports the output digest the receipt signs and, when the caller sent
// result_hash, compares it: a mismatch is VERIFICATION_FAILED.
func (s *Service) checkHash(r *record, c *receiptClaims, resultHash string, res *nk.VerifyResult) error {
	if resultHash != "" && !strings.EqualFold(resultHash, c.OutputSHA256) {
		return errVerification(r.ID, "result_hash does not match the receipt's output hash").
			With("hash", c.OutputSHA256)
	}
	valid := true
	res.Hash, res.HashValid = c.OutputSHA256, &valid
	return nil
}

// sampleResult is what the sample check reports.
type sampleResult struct {
	Matched       bool            `json:"matched"`
	OutputSHA256  string          `json:"output_sha256"`
	Out           json.RawMessage `json:"out"`
	ResolvedLevel nk.DetailLevel  `json:"resolved_level"`
	Ms            int64           `json:"ms"`
}

// checkSample re-runs a deterministic capability on the task's recorded input and
// compares the canonical output with the receipt's.
func (s *Service) checkSample(ctx context.Context, r *record, c *receiptClaims, budget *nk.Budget) (json.RawMessage, error) {
	if r.NoDerive {
		return nil, errDeriveDenied(r.ID)
	}
	capNow, ok := s.catalog.Lookup(r.Cap)
	switch {
	case !ok:
		return nil, errCapabilityNotFound(r.Cap)
	case !capNow.Deterministic:
		return nil, gateway.Errorf(schemas.CodeInvalidParams,
			"Invalid params: the sample check re-runs only deterministic capabilities, and %s is not; use hash or source", capNow.ID).
			With("field", "checks")
	case capNow.Hash != c.H:
		return nil, errVerification(r.ID, "capability "+capNow.ID+" changed since the task ran (h "+c.H+", now "+capNow.Hash+")")
	}
	env, err := s.contexts.forTask(ctx, r)
	if err != nil {
		return nil, err
	}
	begin := s.now()
	out, err := s.invoker.Invoke(withEnvelope(ctx, env), capNow, r.Input)
	if err == nil && out == nil {
		err = gateway.NewError(schemas.CodeInternal)
	}
	if err != nil {
		return nil, gateway.AsError(err)
	}
	value, err := collectResult(ctx, out, s.cfg.Tasks.MaxResultBytes, nil)
	if err != nil {
		return nil, gateway.AsError(err)
	}
	tr, err := newResultOf(capNow, value)
	if err != nil {
		return nil, errVerification(r.ID, "the re-run failed: "+failureText(err))
	}
	if tr.digest != c.OutputSHA256 {
		return nil, errVerification(r.ID, "re-running the capability on the recorded input gave a different output").
			With("hash", c.OutputSHA256).With("sample_hash", tr.digest)
	}
	text, level, _ := nk.Resolve(tr.levels, budget)
	return marshal(sampleResult{
		Matched: true, OutputSHA256: tr.digest, Out: text, ResolvedLevel: level,
		Ms: s.now().Sub(begin).Milliseconds(),
	})
}

// sourceResult is what the source check reports: the task's provenance.
type sourceResult struct {
	Capability   string `json:"capability"`
	Kind         string `json:"kind,omitempty"`
	Source       string `json:"source,omitempty"`
	H            string `json:"h"`
	InputSHA256  string `json:"input_sha256"`
	OutputSHA256 string `json:"output_sha256"`
	CreatedAt    int64  `json:"created_at"`
	CompletedAt  int64  `json:"completed_at"`
	Issuer       string `json:"issuer"`
	Alg          string `json:"alg"`
	KeyID        string `json:"kid"`
	Receipt      string `json:"receipt"`
}

func (s *Service) checkSource(r *record, c *receiptClaims) (json.RawMessage, error) {
	src := sourceResult{
		Capability: r.Cap, H: c.H, InputSHA256: c.InputSHA256, OutputSHA256: c.OutputSHA256,
		CreatedAt: c.CreatedAt, CompletedAt: c.CompletedAt, Issuer: c.Issuer,
		Alg: s.signer.method.Alg(), KeyID: s.signer.kid, Receipt: r.Receipt,
	}
	if capNow, ok := s.catalog.Lookup(r.Cap); ok {
		src.Kind, src.Source = string(capNow.Kind), capNow.Source
	}
	return marshal(src)
}
