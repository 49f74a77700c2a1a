package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority with an ECDSA P-256 key, for development certificates and
// tests: never for production.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are Cert and Key encoded (CERTIFICATE, PKCS #8 PRIVATE KEY).
	CertPEM, KeyPEM []byte
}

// Leaf describes a certificate a CA issues.
type Leaf struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	// URIs are URI SANs, such as a SPIFFE id (spiffe://trust-domain/path).
	URIs []*url.URL
	// Server and Client choose the extended key usages (server auth, client auth).
	Server, Client bool
	// Validity is how long the certificate is valid from now (a minute of clock skew is
	// allowed before).
	Validity time.Duration
}

// Validity of the development certificates.
const (
	DevCAValidity   = 365 * 24 * time.Hour
	DevLeafValidity = 90 * 24 * time.Hour
	// DevClientID is the SPIFFE id of the development client certificate.
	DevClientID = "spiffe://gatehouse.local/dev-client"
)

// NewCA returns a new self-signed CA named commonName, valid for validity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	tmpl, err := template(commonName, validity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// Issue returns a new certificate of l signed by ca, and its new key, PEM encoded.
func (ca *CA) Issue(l Leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	tmpl, err := template(l.CommonName, l.Validity)
	if err != nil {
		return nil, nil, err
	}
	tmpl.DNSNames, tmpl.IPAddresses, tmpl.URIs = l.DNSNames, l.IPs, l.URIs
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if l.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", l.CommonName, err)
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// template is the part of a certificate common to the CA and its leaves.
func template(commonName string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("choosing a serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"Gatehouse development"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
	}, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// DevFile is one file of the development set.
type DevFile struct {
	Name string // file name inside the directory
	Data []byte
	Key  bool // a private key: written with mode 0600
}

// DevSet returns the development certificates: a local CA (ca.pem, ca-key.pem), a server
// certificate for localhost, 127.0.0.1 and ::1 (server.pem, server-key.pem) and a client
// certificate whose identity is DevClientID (client.pem, client-key.pem).
func DevSet() ([]DevFile, error) {
	ca, err := NewCA("Gatehouse development CA", DevCAValidity)
	if err != nil {
		return nil, err
	}
	serverCert, serverKey, err := ca.Issue(Leaf{
		CommonName: "localhost", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, Server: true, Validity: DevLeafValidity,
	})
	if err != nil {
		return nil, err
	}
	id, _ := url.Parse(DevClientID)
	clientCert, clientKey, err := ca.Issue(Leaf{CommonName: "dev-client", URIs: []*url.URL{id}, Client: true, Validity: DevLeafValidity})
	if err != nil {
		return nil, err
	}
	return []DevFile{
		{"ca.pem", ca.CertPEM, false}, {"ca-key.pem", ca.KeyPEM, true},
		{"server.pem", serverCert, false}, {"server-key.pem", serverKey, true},
		{"client.pem", clientCert, false}, {"client-key.pem", clientKey, true},
	}, nil
}

// ErrExists is wrapped by WriteDev's error when a file of the set exists and force is off.
var ErrExists = errors.New("file exists")

// WriteDev writes a new development set (DevSet) into dir, creating it (mode 0700) when
// absent; keys get mode 0600, certificates 0644. It refuses, writing nothing, when a file of
// the set exists, unless force is set; each file is replaced atomically (a server reading
// it never sees half of one). It returns the paths written.
func WriteDev(dir string, force bool) ([]string, error) {
	set, err := DevSet()
	if err != nil {
		return nil, err
	}
	if !force {
		for _, f := range set {
			p := filepath.Join(dir, f.Name)
			if _, err := os.Lstat(p); err == nil {
				return nil, fmt.Errorf("%s: %w (pass --force to replace the set)", p, ErrExists)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(set))
	for _, f := range set {
		mode := os.FileMode(0o644)
		if f.Key {
			mode = 0o600
		}
		p := filepath.Join(dir, f.Name)
		if err := WriteFileAtomic(p, f.Data, mode); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteFileAtomic writes data to a temporary file beside path with mode, then renames it
// over path.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
