// Command go-cosignature checks the witnesses' cosignatures on a svc ledger checkpoint from
// outside, with Go's own signed-note code (golang.org/x/mod/sumdb/note) and nothing of svc's: it
// fetches the served checkpoint, opens it as a signed note with the log's verifier key and one
// verifier per witness key (C2SP tlog-cosignature, Ed25519 cosignature/v1, written here from the
// spec), and says which witnesses' cosignatures verified.
//
// Usage: go-cosignature -url <checkpoint URL> -key <log vkey> -witness <cosigner vkey>[,<vkey>...]
// It prints one JSON object and exits 0 when the note opens with the log's signature, 1 when it
// does not, 2 on bad use.
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type verdict struct {
	OK         bool     `json:"ok"`
	Origin     string   `json:"origin,omitempty"`
	CosignedBy []string `json:"cosignedBy"`
	Timestamps []uint64 `json:"timestamps"`
	Problem    string   `json:"problem,omitempty"`
}

// cosigner verifies cosignature/v1 lines: key hash SHA-256(name || "\n" || 0x04 || key)[:4],
// signature = 8-byte big-endian timestamp || Ed25519 over "cosignature/v1\ntime <t>\n" || body.
type cosigner struct {
	name string
	hash uint32
	key  ed25519.PublicKey
	seen *[]uint64
}

func (c cosigner) Name() string    { return c.name }
func (c cosigner) KeyHash() uint32 { return c.hash }
func (c cosigner) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	if !ed25519.Verify(c.key, signed, sig[8:]) {
		return false
	}
	*c.seen = append(*c.seen, t)
	return true
}

func parseCosigner(vkey string, seen *[]uint64) (cosigner, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return cosigner{}, errors.New("want <name>+<hash>+<key>")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return cosigner{}, errors.New("not a cosignature/v1 Ed25519 key")
	}
	sum := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	if hex.EncodeToString(sum[:4]) != strings.ToLower(parts[1]) {
		return cosigner{}, errors.New("key hash does not match")
	}
	return cosigner{name: parts[0], hash: binary.BigEndian.Uint32(sum[:4]), key: ed25519.PublicKey(raw[1:]), seen: seen}, nil
}

func finish(v verdict, code int) {
	if v.CosignedBy == nil {
		v.CosignedBy = []string{}
	}
	if v.Timestamps == nil {
		v.Timestamps = []uint64{}
	}
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
	os.Exit(code)
}

func main() {
	url := flag.String("url", "", "the checkpoint URL")
	key := flag.String("key", "", "the log's signed-note verifier key")
	witnesses := flag.String("witness", "", "cosigner verifier keys, comma-separated")
	flag.Parse()
	logVerifier, err := note.NewVerifier(*key)
	if *url == "" || err != nil {
		finish(verdict{Problem: fmt.Sprintf("bad use: %v", err)}, 2)
	}
	var seen []uint64
	verifiers := []note.Verifier{logVerifier}
	for _, w := range strings.Split(*witnesses, ",") {
		if w == "" {
			continue
		}
		c, err := parseCosigner(w, &seen)
		if err != nil {
			finish(verdict{Problem: "bad witness key: " + err.Error()}, 2)
		}
		verifiers = append(verifiers, c)
	}
	res, err := http.Get(*url)
	if err != nil {
		finish(verdict{Problem: err.Error()}, 1)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	n, err := note.Open(body, note.VerifierList(verifiers...))
	if err != nil {
		finish(verdict{Problem: "the note does not open: " + err.Error()}, 1)
	}
	v := verdict{OK: true, Origin: strings.SplitN(n.Text, "\n", 2)[0], Timestamps: seen}
	for _, s := range n.Sigs {
		if s.Name != logVerifier.Name() {
			v.CosignedBy = append(v.CosignedBy, s.Name)
		}
	}
	finish(v, 0)
}
