#!/bin/bash
cd /tmp/gpu30
for i in 1 2; do for b in tacit-base tacit-new3; do
  /usr/bin/time -v ./$b bench pir backends --rows 1000000 --bytes 41 --peers none --no-ntru --json > cpu-backends-$b-$i.json 2> cpu-backends-$b-$i.err
  echo "$b $i rc $?"
done; done
