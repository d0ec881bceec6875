#!/bin/sh
# An adapter that does not speak the protocol: plain text out, exit 0 whatever it is given,
# and it shrugs off SIGTERM. Baton's contract kit must fail it, naming the cases.
trap '' TERM
cat > /dev/null
echo "hello, I am an agent"
case "$BATON_BROKEN_SLOW" in
  1) sleep 30 ;;
esac
exit 0
