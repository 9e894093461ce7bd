package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// nodeProcess is a node script the evaluation talks to one JSON line at
// a time: a request line in, a reply line out.
type nodeProcess struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startNode runs script with the node_modules under dir; first, when
// set, is the line sent before the script answers "ready".
func startNode(script, dir string, first []byte) (*nodeProcess, error) {
	cmd := exec.Command("node", "-e", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &nodeProcess{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if first != nil {
		if _, err := in.Write(append(first, '\n')); err != nil {
			p.close()
			return nil, err
		}
	}
	if ready, err := p.out.ReadString('\n'); err != nil || strings.TrimSpace(ready) != "ready" {
		p.close()
		return nil, fmt.Errorf("node did not start the script: %v", err)
	}
	return p, nil
}

// ask sends v as one JSON line and decodes the reply line into out.
func (p *nodeProcess) ask(v, out any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.New("the node process is closed")
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return err
	}
	reply, err := p.out.ReadString('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(reply), out)
}

// close ends the process (a second close does nothing).
func (p *nodeProcess) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.in.Close()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}
