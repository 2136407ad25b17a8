package procmem

import (
	"path/filepath"
	"strconv"
)

// PeakReader reads processes' resident peaks (VmHWM) from
// <procPath>/<pid>/status; only VmHWM is parsed of it. Not safe for
// concurrent use.
type PeakReader struct {
	procPath string
	buf      []byte
}

// NewPeakReader returns a PeakReader of the processes under procPath.
func NewPeakReader(procPath string) *PeakReader {
	return &PeakReader{procPath: procPath}
}

// ResidentPeak returns pid's VmHWM in bytes. A process gone, or a kernel
// without the field, is an error.
func (r *PeakReader) ResidentPeak(pid int) (uint64, error) {
	data, buf, err := ReadProcFile(filepath.Join(r.procPath, strconv.Itoa(pid), "status"), r.buf, 64<<10)
	r.buf = buf
	if err != nil {
		return 0, err
	}
	return parseStatusHWM(data)
}
