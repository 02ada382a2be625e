import type { Species } from "../../lib/animals.js";
import type { NotificationLanguage } from "../../lib/notifications.js";

/**
 * The first-hour guide's text (the report_guide notification), one
 * catalogue per language. `{name}`-style placeholders are filled by
 * guide.ts; the text is plain, for the app and for email. What it advises,
 * and why, is docs/decisions/0096-*: dogs are mostly found in their
 * neighbourhood (Weiss et al. 2012), cats mostly within 500 m, hiding
 * (Huang et al. 2018). A missing key is a compile error in every catalogue.
 */
export interface GuideMessages {
  species: Record<Species, string>;
  /** {species} */
  subject: string;
  /** {species} */
  intro: string;
  /** What to do for a dog, a cat, and any other animal, in order. */
  steps: { dog: string[]; cat: string[]; other: string[] };
  /** For every animal, after its own steps; {species}. */
  always: string[];
  /** {url} */
  share: string;
  /** {url} */
  flyer: string;
  /** {km} */
  sheltersHeading: string;
  /** {name}, {distance} (km), {contact}, {days} */
  shelter: string;
  /** The same for a shelter with no public contact: {name}, {distance}, {days} */
  shelterBare: string;
  /** {km} */
  noShelters: string;
}

const en: GuideMessages = {
  species: { dog: "dog", cat: "cat", bird: "bird", rabbit: "rabbit", other: "animal" },
  subject: "Your lost {species}: what to do in the first hour",
  intro: "You have reported your {species} lost. The first hours count most. What to do now:",
  steps: {
    dog: [
      "Search your neighbourhood on foot, calling its name, and ask every neighbour you meet to look in their gardens and garages: about half of lost dogs are found this way, close to home.",
      "Leave something that smells of home (its bed, clothes you have worn) at your door, in case it finds its way back.",
    ],
    cat: [
      "Search within 500 m of where it went missing: most lost cats are found close by, hiding and silent.",
      "Look in hiding places with a torch (under decks and cars, in sheds, garages, bushes and crawl spaces), and ask your neighbours to check theirs.",
      "Search at dusk and at dawn, when it is quiet, and call softly. Many cats come home on their own: where it is safe, leave a door or window it knows open.",
    ],
    other: ["Search close to where it went missing, and ask your neighbours to look out for it."],
  },
  always: [
    "Call the shelters listed below, tell them what your {species} looks like and give them your report's link; call again every day or two.",
    "Print the flyer and hand it out to neighbours, shops and vets nearby.",
  ],
  share: "Your report's page, to share: {url}",
  flyer: "The flyer, to print and hand out: {url}",
  sheltersHeading: "Shelters within {km} km of where it was last seen, nearest first:",
  shelter: "{name}, about {distance} km away ({contact}). Strays are held there {days} days before they may be rehomed.",
  shelterBare: "{name}, about {distance} km away. Strays are held there {days} days before they may be rehomed.",
  noShelters: "No partner shelter is listed within {km} km yet: call the animal shelters, vets and the council's animal service near you.",
};

const de: GuideMessages = {
  species: { dog: "Hund", cat: "Katze", bird: "Vogel", rabbit: "Kaninchen", other: "Tier" },
  subject: "Vermisst ({species}): was Sie in der ersten Stunde tun können",
  intro: "Sie haben Ihr Tier ({species}) als vermisst gemeldet. Die ersten Stunden zählen am meisten. Was Sie jetzt tun können:",
  steps: {
    dog: [
      "Suchen Sie Ihre Nachbarschaft zu Fuß ab, rufen Sie Ihren Hund beim Namen und bitten Sie alle Nachbarn, in Gärten und Garagen nachzusehen: Etwa die Hälfte der vermissten Hunde wird so gefunden, nahe dem Zuhause.",
      "Legen Sie etwas, das nach Zuhause riecht (sein Körbchen, getragene Kleidung), vor Ihre Tür, falls er den Weg zurück findet.",
    ],
    cat: [
      "Suchen Sie im Umkreis von 500 m um den Ort, an dem sie verschwunden ist: Die meisten vermissten Katzen werden ganz in der Nähe gefunden, versteckt und still.",
      "Sehen Sie mit einer Taschenlampe in Verstecken nach (unter Terrassen und Autos, in Schuppen, Garagen, Büschen und Kellerschächten) und bitten Sie Ihre Nachbarn, bei sich nachzusehen.",
      "Suchen Sie in der Abend- und Morgendämmerung, wenn es ruhig ist, und rufen Sie leise. Viele Katzen kommen von selbst zurück: Lassen Sie, wo es sicher ist, eine vertraute Tür oder ein Fenster offen.",
    ],
    other: ["Suchen Sie in der Nähe des Ortes, an dem es verschwunden ist, und bitten Sie Ihre Nachbarn, die Augen offen zu halten."],
  },
  always: [
    "Rufen Sie die unten genannten Tierheime an, beschreiben Sie Ihr Tier ({species}) und geben Sie ihnen den Link zu Ihrer Meldung; rufen Sie alle ein bis zwei Tage wieder an.",
    "Drucken Sie den Aushang und verteilen Sie ihn an Nachbarn, Geschäfte und Tierarztpraxen in der Nähe.",
  ],
  share: "Die Seite Ihrer Meldung, zum Teilen: {url}",
  flyer: "Der Aushang, zum Drucken und Verteilen: {url}",
  sheltersHeading: "Tierheime im Umkreis von {km} km um den Ort, an dem es zuletzt gesehen wurde, das nächste zuerst:",
  shelter: "{name}, etwa {distance} km entfernt ({contact}). Fundtiere werden dort {days} Tage gehalten, bevor sie vermittelt werden dürfen.",
  shelterBare: "{name}, etwa {distance} km entfernt. Fundtiere werden dort {days} Tage gehalten, bevor sie vermittelt werden dürfen.",
  noShelters: "Im Umkreis von {km} km ist noch kein Partner-Tierheim eingetragen: Rufen Sie die Tierheime, Tierarztpraxen und das Fundbüro in Ihrer Nähe an.",
};

const fr: GuideMessages = {
  species: { dog: "chien", cat: "chat", bird: "oiseau", rabbit: "lapin", other: "animal" },
  subject: "Votre {species} perdu : que faire dans la première heure",
  intro: "Vous avez signalé la perte de votre {species}. Les premières heures comptent le plus. Que faire maintenant :",
  steps: {
    dog: [
      "Parcourez votre quartier à pied en l'appelant par son nom, et demandez à chaque voisin de regarder dans son jardin et son garage : environ la moitié des chiens perdus sont retrouvés ainsi, près de chez eux.",
      "Laissez devant votre porte quelque chose qui sent la maison (son panier, un vêtement porté), au cas où il retrouverait le chemin.",
    ],
    cat: [
      "Cherchez dans un rayon de 500 m autour de l'endroit où il a disparu : la plupart des chats perdus sont retrouvés tout près, cachés et silencieux.",
      "Fouillez les cachettes à la lampe de poche (sous les terrasses et les voitures, dans les abris, garages, buissons et vides sanitaires), et demandez à vos voisins de vérifier les leurs.",
      "Cherchez au crépuscule et à l'aube, quand tout est calme, et appelez doucement. Beaucoup de chats rentrent d'eux-mêmes : si c'est sans danger, laissez ouverte une porte ou une fenêtre qu'il connaît.",
    ],
    other: ["Cherchez près de l'endroit où il a disparu, et demandez à vos voisins d'ouvrir l'œil."],
  },
  always: [
    "Appelez les refuges ci-dessous, décrivez votre {species} et donnez-leur le lien de votre signalement ; rappelez tous les jours ou tous les deux jours.",
    "Imprimez l'affiche et distribuez-la aux voisins, commerces et vétérinaires du quartier.",
  ],
  share: "La page de votre signalement, à partager : {url}",
  flyer: "L'affiche, à imprimer et distribuer : {url}",
  sheltersHeading: "Refuges à moins de {km} km de l'endroit où il a été vu pour la dernière fois, du plus proche au plus éloigné :",
  shelter: "{name}, à environ {distance} km ({contact}). Les animaux trouvés y sont gardés {days} jours avant de pouvoir être proposés à l'adoption.",
  shelterBare: "{name}, à environ {distance} km. Les animaux trouvés y sont gardés {days} jours avant de pouvoir être proposés à l'adoption.",
  noShelters: "Aucun refuge partenaire n'est encore inscrit à moins de {km} km : appelez les refuges, les vétérinaires et la fourrière près de chez vous.",
};

const es: GuideMessages = {
  species: { dog: "perro", cat: "gato", bird: "pájaro", rabbit: "conejo", other: "animal" },
  subject: "Su {species} perdido: qué hacer en la primera hora",
  intro: "Ha avisado de la pérdida de su {species}. Las primeras horas son las que más cuentan. Qué hacer ahora:",
  steps: {
    dog: [
      "Recorra su barrio a pie llamándolo por su nombre y pida a cada vecino que mire en su jardín y su garaje: alrededor de la mitad de los perros perdidos se encuentran así, cerca de casa.",
      "Deje en su puerta algo que huela a casa (su cama, ropa que haya usado) por si encuentra el camino de vuelta.",
    ],
    cat: [
      "Busque en un radio de 500 m del lugar donde desapareció: la mayoría de los gatos perdidos se encuentran muy cerca, escondidos y en silencio.",
      "Revise los escondites con una linterna (bajo terrazas y coches, en cobertizos, garajes, arbustos y huecos) y pida a sus vecinos que revisen los suyos.",
      "Busque al anochecer y al amanecer, cuando todo está tranquilo, y llámelo en voz baja. Muchos gatos vuelven solos: si es seguro, deje abierta una puerta o ventana que conozca.",
    ],
    other: ["Busque cerca del lugar donde desapareció y pida a sus vecinos que estén atentos."],
  },
  always: [
    "Llame a los refugios de la lista, describa a su {species} y deles el enlace de su aviso; vuelva a llamar cada uno o dos días.",
    "Imprima el cartel y repártalo entre vecinos, tiendas y veterinarios de la zona.",
  ],
  share: "La página de su aviso, para compartir: {url}",
  flyer: "El cartel, para imprimir y repartir: {url}",
  sheltersHeading: "Refugios a menos de {km} km de donde se le vio por última vez, del más cercano al más lejano:",
  shelter: "{name}, a unos {distance} km ({contact}). Allí retienen a los animales encontrados {days} días antes de que puedan darse en adopción.",
  shelterBare: "{name}, a unos {distance} km. Allí retienen a los animales encontrados {days} días antes de que puedan darse en adopción.",
  noShelters: "Todavía no hay ningún refugio asociado a menos de {km} km: llame a los refugios, veterinarios y al servicio municipal de animales cerca de usted.",
};

export const guideCatalogues: Record<NotificationLanguage, GuideMessages> = { en, de, fr, es };
