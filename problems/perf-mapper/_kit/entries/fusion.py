

def map_chain(chain, architecture):
    return search(chain, architecture)
