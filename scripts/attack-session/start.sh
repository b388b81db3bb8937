#!/bin/bash
# usage: start.sh NAME NOFILE [extra flags...]
name=$1; nof=$2; shift 2
d=/tmp/atk2/$name; rm -rf $d; mkdir -p $d
prlimit --nofile=$nof:$nof /tmp/attack/gpusort-server --backend cpu --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --shm-socket $d/shm.sock --data-port 0 --port-file $d/ports "$@" >$d/log 2>&1 &
echo $! > $d/pid
for i in $(seq 50); do [ -s $d/ports ] && grep -q data_port $d/ports && break; sleep 0.2; done
cat $d/ports; echo pid $(cat $d/pid)
