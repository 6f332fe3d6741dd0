// Command go-verifier checks a svc workspace ledger from outside, with Go's own checksum-database
// code (golang.org/x/mod/sumdb/note and sumdb/tlog) and nothing of svc's: it fetches the signed
// checkpoint, the hash tiles and the entry bundles that svc serves in the C2SP tlog-tiles layout,
// and checks the checkpoint's signature, every tile's hashes against the signed root, every
// entry's inclusion in the tree and, given an earlier checkpoint, that the log only grew.
//
// Go names tiles with their height ("tile/8/0/x001/234", "tile/8/data/000") where C2SP does not
// ("tile/0/x001/234", "tile/entries/000"), and sumdb parses only its own checkpoint header, so
// this program maps the paths and reads the checkpoint body (origin, size, root) itself.
//
// Usage: go-verifier -url <base ending in /> -key <vkey> [-token <bearer>] [-old <checkpoint file>]
// It prints one JSON object and exits 0 when the log verifies, 1 when it does not, 2 on bad use.
package main

import (
	"encoding/base64"
	"encoding/binary"
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
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

type verdict struct {
	OK            bool   `json:"ok"`
	Origin        string `json:"origin,omitempty"`
	Size          int64  `json:"size"`
	Entries       int64  `json:"entries"`
	Tiles         int    `json:"tiles"`
	Consistent    *bool  `json:"consistentWithOld,omitempty"`
	FirstBadIndex *int64 `json:"firstBadIndex,omitempty"`
	Problem       string `json:"problem,omitempty"`
}

type fetcher struct {
	base  string
	token string
}

func (f fetcher) get(path string) ([]byte, error) {
	req, err := http.NewRequest("GET", f.base+path, nil)
	if err != nil {
		return nil, err
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: status %d", path, res.StatusCode)
	}
	return body, nil
}

// c2spPath maps Go's tile path to the C2SP one.
func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/"+strconv.Itoa(height)+"/")
	if strings.HasPrefix(p, "data/") {
		p = "entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

// tileReader serves sumdb's TileHashReader from svc's C2SP tiles.
type tileReader struct {
	f     fetcher
	count *int
}

func (r tileReader) Height() int { return height }

func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := r.f.get(c2spPath(t))
		if err != nil {
			return nil, err
		}
		*r.count++
		out[i] = data
	}
	return out, nil
}

func (r tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

// openCheckpoint checks the note's signature with Go's note package and reads the C2SP body.
func openCheckpoint(msg []byte, verifier note.Verifier) (string, tlog.Tree, error) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return "", tlog.Tree{}, fmt.Errorf("checkpoint signature: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 {
		return "", tlog.Tree{}, errors.New("checkpoint body has fewer than 3 lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return "", tlog.Tree{}, errors.New("checkpoint size is not a decimal number")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return "", tlog.Tree{}, errors.New("checkpoint root is not the base64 of 32 bytes")
	}
	var h tlog.Hash
	copy(h[:], root)
	return lines[0], tlog.Tree{N: size, Hash: h}, nil
}

// entries splits an entry bundle: each entry after its big-endian 16-bit length.
func entries(bundle []byte) ([][]byte, error) {
	var out [][]byte
	for len(bundle) > 0 {
		if len(bundle) < 2 {
			return nil, errors.New("entry bundle ends inside a length")
		}
		n := int(binary.BigEndian.Uint16(bundle))
		if len(bundle) < 2+n {
			return nil, errors.New("entry bundle ends inside an entry")
		}
		out = append(out, bundle[2:2+n])
		bundle = bundle[2+n:]
	}
	return out, nil
}

func verify(f fetcher, verifier note.Verifier, oldFile string, v *verdict) error {
	msg, err := f.get("checkpoint")
	if err != nil {
		return err
	}
	origin, tree, err := openCheckpoint(msg, verifier)
	if err != nil {
		return err
	}
	v.Origin, v.Size = origin, tree.N
	hr := tlog.TileHashReader(tree, tileReader{f, &v.Tiles})

	// Every hash tile of the log, fetched as served and checked hash by hash against the signed root.
	for _, t := range tlog.NewTiles(height, 0, tree.N) {
		data, err := f.get(c2spPath(t))
		if err != nil {
			return err
		}
		v.Tiles++
		want, err := tlog.ReadTileData(t, hr)
		if err != nil {
			return fmt.Errorf("tile %s: %v", c2spPath(t), err)
		}
		if string(want) != string(data) {
			return fmt.Errorf("tile %s does not match the signed tree", c2spPath(t))
		}
	}

	// Every entry, from its bundle, included at its index under the signed root.
	for start := int64(0); start < tree.N; start += 1 << height {
		t := tlog.Tile{H: height, L: -1, N: start >> height, W: int(min(tree.N-start, 1<<height))}
		bundle, err := f.get(c2spPath(t))
		if err != nil {
			return err
		}
		list, err := entries(bundle)
		if err != nil || len(list) != t.W {
			return fmt.Errorf("entry bundle %s: holds %d entries, want %d (%v)", c2spPath(t), len(list), t.W, err)
		}
		for i, data := range list {
			index := start + int64(i)
			proof, err := tlog.ProveRecord(tree.N, index, hr)
			if err == nil {
				err = tlog.CheckRecord(proof, tree.N, tree.Hash, index, tlog.RecordHash(data))
			}
			if err != nil {
				v.FirstBadIndex = &index
				return fmt.Errorf("entry %d is not the one in the signed tree: %v", index, err)
			}
			v.Entries++
		}
	}

	if oldFile != "" {
		oldMsg, err := os.ReadFile(oldFile)
		if err != nil {
			return err
		}
		_, old, err := openCheckpoint(oldMsg, verifier)
		if err != nil {
			return fmt.Errorf("old %v", err)
		}
		ok := false
		v.Consistent = &ok
		if old.N > tree.N {
			return fmt.Errorf("the log shrank from %d to %d", old.N, tree.N)
		}
		proof, err := tlog.ProveTree(tree.N, old.N, hr)
		if err == nil {
			err = tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash)
		}
		if err != nil {
			return fmt.Errorf("the log of size %d is not an extension of the old one of size %d: %v", tree.N, old.N, err)
		}
		ok = true
	}
	return nil
}

func min(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func main() {
	base := flag.String("url", "", "the ledger's base URL, ending in /")
	key := flag.String("key", "", "the signed-note verifier key")
	token := flag.String("token", "", "a bearer token (service token with evidence:read)")
	oldFile := flag.String("old", "", "an earlier checkpoint of the same log")
	flag.Parse()
	if *base == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "usage: go-verifier -url <base/> -key <vkey> [-token <t>] [-old <file>]")
		os.Exit(2)
	}
	verifier, err := note.NewVerifier(*key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad verifier key:", err)
		os.Exit(2)
	}
	v := verdict{}
	if err := verify(fetcher{*base, *token}, verifier, *oldFile, &v); err != nil {
		v.Problem = err.Error()
	} else {
		v.OK = true
	}
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
	if !v.OK {
		os.Exit(1)
	}
}
