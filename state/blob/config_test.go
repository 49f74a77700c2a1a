package blob_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

func TestConfigValidate(t *testing.T) {
	key := strings.Repeat("s", blob.MinKeyBytes)
	tests := []struct {
		name     string
		cfg      blob.Config
		wantPath []string
	}{
		{"dir", blob.Config{Dir: "/var/lib/gatehouse/blobs"}, nil},
		{"dir without a path", blob.Config{}, []string{"dir"}},
		{"s3", blob.Config{Store: "s3", S3: &blob.S3Config{Endpoint: "s3:9000", Bucket: "b"}, SigningKey: key}, nil},
		{"s3 without a bucket", blob.Config{Store: "s3", S3: &blob.S3Config{Endpoint: "s3:9000"}}, []string{"s3"}},
		{"unknown store", blob.Config{Store: "tape"}, []string{"store"}},
		{"ttl too short", blob.Config{Dir: "d", URLTTL: time.Millisecond}, []string{"url_ttl"}},
		{"ttl too long", blob.Config{Dir: "d", URLTTL: 8 * 24 * time.Hour}, []string{"url_ttl"}},
		{"negative limits", blob.Config{Dir: "d", MaxObjectBytes: -1, MaxRangeBytes: -1}, []string{"max_object_bytes", "max_range_bytes"}},
		{"short key", blob.Config{Dir: "d", SigningKey: key[1:]}, []string{"signing_key"}},
		{"bad public URL", blob.Config{Dir: "d", PublicURL: "gw:8080"}, []string{"public_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.cfg.WithDefaults().Validate() {
				got = append(got, p.Path)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantPath, ",") {
				t.Errorf("problems at %v; want %v", got, tt.wantPath)
			}
		})
	}
	d := blob.Config{Dir: "d"}.WithDefaults()
	if d.Store != blob.StoreDir || d.URLTTL != blob.DefaultURLTTL || d.MaxRangeBytes != d.MaxObjectBytes || d.WriteScope != blob.DefaultScope {
		t.Errorf("defaults = %+v", d)
	}
}
