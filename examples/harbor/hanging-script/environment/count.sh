#!/bin/bash
i=1
while [ "$i" -le 5 ]; do
  sleep 1
done
