# Makes the test PKI of the mutual-TLS tests: a certificate authority, a server certificate for
# the loopback addresses, and client certificates (two generations of one client, a self-signed
# one, an expired one, one from another authority). Keys and certificates are made anew on every
# run, with openssl (Debian's package), in .build/test-pki; none is ever committed.
# Source this file, then call: make_test_pki
# It sets AUTHREQ_TEST_PKI to the folder.

make_test_pki() {
    local root dir
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    dir="$root/.build/test-pki"
    command -v openssl >/dev/null || { echo "error: the mutual-TLS tests need openssl: apt-get install openssl" >&2; return 1; }
    rm -rf "$dir" && mkdir -p "$dir" && chmod 700 "$dir"
    (
        set -e
        cd "$dir"
        key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
        # Two authorities: the one the servers trust, and another with the same name.
        for ca in ca other-ca; do
            key "$ca-key.pem"
            openssl req -x509 -new -key "$ca-key.pem" -subj "/O=AuthenticatedRequests tests/CN=Test CA" -days 2 \
                -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
                -out "$ca.pem" 2>/dev/null
        done
        # sign NAME SUBJECT CA EXTENSIONS [openssl ca dates]
        sign() {
            local name="$1" subject="$2" ca="$3" extensions="$4"
            key "$name-key.pem"
            openssl req -new -key "$name-key.pem" -subj "$subject" -out "$name.csr" 2>/dev/null
            printf '%s\n' "$extensions" >"$name.ext"
            openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca-key.pem" -CAcreateserial -days 2 \
                -extfile "$name.ext" -out "$name.pem" 2>/dev/null
            rm -f "$name.csr" "$name.ext"
        }
        client="/O=AuthenticatedRequests tests/CN=authreq-mtls-client"
        client_ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
        sign server "/O=AuthenticatedRequests tests/CN=localhost" ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
        sign client-a "$client" ca "$client_ext"
        sign client-b "$client" ca "$client_ext"
        sign other-ca-client "$client" other-ca "$client_ext"
        # Self-signed (RFC 8705 §2.2): its own issuer.
        key self-signed-key.pem
        openssl req -x509 -new -key self-signed-key.pem -subj "/O=AuthenticatedRequests tests/CN=authreq-self-signed" \
            -days 2 -addext "extendedKeyUsage=clientAuth" -out self-signed.pem 2>/dev/null
        # Expired: valid for a day in 2020, signed by the trusted authority (`openssl ca` sets dates).
        key expired-key.pem
        openssl req -new -key expired-key.pem -subj "$client" -out expired.csr 2>/dev/null
        mkdir -p ca-db && : >ca-db/index.txt && echo 01 >ca-db/serial
        cat >ca-db/ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = $dir/ca-db
database = \$dir/index.txt
serial = \$dir/serial
new_certs_dir = \$dir
default_md = sha256
policy = anything
copy_extensions = none
[anything]
O = optional
CN = supplied
CNF
        openssl ca -batch -config ca-db/ca.cnf -cert ca.pem -keyfile ca-key.pem -in expired.csr -out expired.pem \
            -startdate 20200101000000Z -enddate 20200102000000Z -notext >/dev/null 2>&1
        rm -rf expired.csr ca-db
        # What a verifying TLS terminator trusts for client certificates: the CA, and the one
        # self-signed certificate that is registered (RFC 8705 §2.2).
        cat ca.pem self-signed.pem >client-trust.pem
        chmod 600 ./*-key.pem
    ) || { echo "error: could not make the test PKI in ${dir#"$root"/}" >&2; return 1; }
    export AUTHREQ_TEST_PKI="$dir"
    echo "Test PKI made in ${dir#"$root"/}" >&2
}
