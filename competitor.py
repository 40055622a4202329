def make(scenario):
    return lambda o: {p['person_id']: 'stay' for p in o['people']}
