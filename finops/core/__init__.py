"""What every layer uses: who may see what (access), how figures read (display), UTC months and a page's period,
provider keys at rest (crypto), the seam for outbound HTTP to URLs people type (egress), safe text, model ids, logs."""
