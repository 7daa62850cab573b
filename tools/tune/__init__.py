"""tune: propose candidates, gate them on every input set, time the ones that pass, remember all of them."""
