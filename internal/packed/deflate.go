package packed

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// An Object's JSON is kept deflated (raw DEFLATE at level 2, primed with
// dictionary). A Deployment's JSON without its labels and annotations,
// about 1.4 KB, deflates to about 160 bytes; deflating takes less time than
// encoding it and inflating a fraction of decoding it. Level 1 (BestSpeed)
// would be no faster here and ignores a dictionary: without one the same
// Deployment takes about 650 bytes.
//
// The pools hold idle compressors and decompressors: each carries tens to
// hundreds of kilobytes of tables, too much to allocate per object. They
// hold no information between uses.
var (
	deflaters = sync.Pool{New: func() any {
		w, err := flate.NewWriterDict(nil, deflateLevel, dictionaryBytes)
		if err != nil { // only for an invalid level
			panic(err)
		}
		return &deflater{w: w}
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), dictionaryBytes) }}
)

// deflateLevel is the fastest level that uses a dictionary.
const deflateLevel = 2

// dictionaryBytes is dictionary as the flate package takes it; it copies
// it and never writes to it.
var dictionaryBytes = []byte(dictionary)

type deflater struct {
	w   *flate.Writer
	buf bytes.Buffer
}

// deflate returns b compressed, in a slice of its own exact size.
func deflate(b []byte) ([]byte, error) {
	d := deflaters.Get().(*deflater)
	defer deflaters.Put(d)
	d.buf.Reset()
	d.w.Reset(&d.buf)
	if _, err := d.w.Write(b); err != nil {
		return nil, fmt.Errorf("compressing: %w", err)
	}
	if err := d.w.Close(); err != nil {
		return nil, fmt.Errorf("compressing: %w", err)
	}
	return bytes.Clone(d.buf.Bytes()), nil
}

// inflate returns the size bytes that deflate compressed into b.
func inflate(b []byte, size int) ([]byte, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(b), dictionaryBytes); err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	return out, nil
}
