package replay

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// readBufSize is the line reader's buffer: lines longer than this are
// skipped as malformed.
const readBufSize = 1 << 20

// countingReader counts the bytes read through it, for the progress bar.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// errTooLong is a line longer than the read buffer: skipped as malformed.
var errTooLong = errors.New("line longer than the read buffer")

// lineSource yields the lines of an input, transparently gunzipped.
type lineSource struct {
	raw  *countingReader
	br   *bufio.Reader
	gz   *gzip.Reader
	line int64 // number of the line last returned, from 1
}

// newLineSource wraps r, detecting gzip by its magic bytes.
func newLineSource(r io.Reader) (*lineSource, error) {
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, readBufSize)
	s := &lineSource{raw: cr, br: br}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		gz.Multistream(true)
		s.gz = gz
		s.br = bufio.NewReaderSize(gz, readBufSize)
	}
	return s, nil
}

// peek returns up to n bytes of the (decompressed) input without
// consuming them, for format detection.
func (s *lineSource) peek(n int) []byte {
	b, _ := s.br.Peek(n)
	return b
}

// next returns the next line without its line ending. err is io.EOF at
// the end, errTooLong for a line that did not fit (skipped), or a read
// error.
func (s *lineSource) next() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	switch err {
	case nil:
	case bufio.ErrBufferFull:
		s.line++
		for err == bufio.ErrBufferFull {
			_, err = s.br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, errTooLong
	case io.EOF:
		if len(line) == 0 {
			return nil, io.EOF
		}
	default:
		return nil, err
	}
	s.line++
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n], nil
}
